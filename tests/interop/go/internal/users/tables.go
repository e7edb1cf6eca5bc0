package users

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hugr-lab/airport-go/catalog"
)

// ReadOnly serves rows and accepts no DML (demo_schema.readonly).
type ReadOnly struct {
	name, comment string
	s             *store
}

// Insertable adds INSERT: rowids are assigned from a counter, a null id takes the rowid.
type Insertable struct{ ReadOnly }

// Legacy is dml_schema.users: INSERT plus the rowid-slice UPDATE and DELETE interfaces.
type Legacy struct{ Insertable }

// Batch is batch_schema.users: INSERT plus the RecordBatch UPDATE and DELETE interfaces.
type Batch struct{ Insertable }

var (
	_ catalog.InsertableTable     = (*Insertable)(nil)
	_ catalog.UpdatableTable      = (*Legacy)(nil)
	_ catalog.DeletableTable      = (*Legacy)(nil)
	_ catalog.UpdatableBatchTable = (*Batch)(nil)
	_ catalog.DeletableBatchTable = (*Batch)(nil)
)

func NewReadOnly(name, comment string, seed []Row) *ReadOnly {
	return &ReadOnly{name: name, comment: comment, s: newStore(seed)}
}

func NewLegacy(name, comment string) *Legacy {
	return &Legacy{Insertable{*NewReadOnly(name, comment, nil)}}
}

func NewBatch(name, comment string) *Batch {
	return &Batch{Insertable{*NewReadOnly(name, comment, nil)}}
}

func (t *ReadOnly) Name() string    { return t.name }
func (t *ReadOnly) Comment() string { return t.comment }

func (t *ReadOnly) ArrowSchema(columns []string) *arrow.Schema {
	return catalog.ProjectSchema(Schema, columns)
}

// Scan returns every committed row, rowid included, as one batch.
func (t *ReadOnly) Scan(ctx context.Context, _ *catalog.ScanOptions) (array.RecordReader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.s.mu.RLock()
	rec := record(Schema, t.s.live())
	t.s.mu.RUnlock()
	defer rec.Release()
	return array.NewRecordReader(Schema, []arrow.RecordBatch{rec})
}

// Rows is a copy of the committed rows (for tests driving the server in-process).
func (t *ReadOnly) Rows() []Row {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return t.s.live()
}

func (t *Insertable) Insert(ctx context.Context, rows array.RecordReader, opts *catalog.DMLOptions) (*catalog.DMLResult, error) {
	var affected int64
	var out returning
	out.start(opts)
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := rowsFromBatch(rows.RecordBatch())
		if err != nil {
			return nil, err
		}
		t.s.mu.Lock()
		for i := range batch {
			batch[i].RowID = t.s.next
			t.s.next++
			if batch[i].ID == nil {
				id := batch[i].RowID
				batch[i].ID = &id
			}
		}
		t.s.rows = append(t.s.rows, batch...)
		t.s.mu.Unlock()
		affected += int64(len(batch))
		out.add(batch)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out.result(affected)
}

// update applies new values (by column name) to the rows with the given rowids; rowids
// that name no row are skipped (spec 003).
func (t *ReadOnly) update(rowids []int64, values []Row, names []string, out *returning) int64 {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	var affected int64
	changed := make([]Row, 0, len(rowids))
	for i, rowid := range rowids {
		p := t.s.position(rowid)
		if p < 0 {
			continue
		}
		setColumns(&t.s.rows[p], values[i], names)
		changed = append(changed, t.s.rows[p])
		affected++
	}
	out.add(changed)
	return affected
}

// remove deletes the rows with the given rowids; unknown rowids are skipped.
func (t *ReadOnly) remove(rowids []int64, out *returning) int64 {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	var removed []Row
	for _, rowid := range rowids {
		if p := t.s.position(rowid); p >= 0 {
			removed = append(removed, t.s.rows[p])
			t.s.kill(p)
		}
	}
	out.add(removed)
	return int64(len(removed))
}

func (t *Legacy) Update(ctx context.Context, rowIDs []int64, rows array.RecordReader, opts *catalog.DMLOptions) (*catalog.DMLResult, error) {
	var affected int64
	var out returning
	out.start(opts)
	offset := 0
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec := rows.RecordBatch()
		values, err := rowsFromBatch(rec)
		if err != nil {
			return nil, err
		}
		if offset+len(values) > len(rowIDs) {
			return nil, fmt.Errorf("%d rows for %d rowids", offset+len(values), len(rowIDs))
		}
		affected += t.update(rowIDs[offset:offset+len(values)], values, columnNames(rec), &out)
		offset += len(values)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out.result(affected)
}

func (t *Legacy) Delete(ctx context.Context, rowIDs []int64, opts *catalog.DMLOptions) (*catalog.DMLResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out returning
	out.start(opts)
	return out.result(t.remove(rowIDs, &out))
}

func (t *Batch) Update(ctx context.Context, rows arrow.RecordBatch, opts *catalog.DMLOptions) (*catalog.DMLResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rowids, err := batchRowIDs(rows, false)
	if err != nil {
		return nil, err
	}
	values, err := rowsFromBatch(rows)
	if err != nil {
		return nil, err
	}
	var out returning
	out.start(opts)
	return out.result(t.update(rowids, values, columnNames(rows), &out))
}

func (t *Batch) Delete(ctx context.Context, rows arrow.RecordBatch, opts *catalog.DMLOptions) (*catalog.DMLResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rowids, err := batchRowIDs(rows, true)
	if err != nil {
		return nil, err
	}
	var out returning
	out.start(opts)
	return out.result(t.remove(rowids, &out))
}

// batchRowIDs reads the rowid column the way the batch interfaces require: found with
// FindRowIDColumn (DELETE falls back to column 0), any null is ErrNullRowID.
func batchRowIDs(rec arrow.RecordBatch, fallbackFirst bool) ([]int64, error) {
	idx := catalog.FindRowIDColumn(rec.Schema())
	if idx < 0 && fallbackFirst && rec.NumCols() > 0 {
		idx = 0
	}
	if idx < 0 {
		return nil, fmt.Errorf("rowid column not found")
	}
	col, ok := rec.Column(idx).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("rowid column must be int64, got %s", rec.Column(idx).DataType())
	}
	if col.NullN() > 0 {
		return nil, catalog.ErrNullRowID
	}
	return append([]int64(nil), col.Int64Values()...), nil
}

func columnNames(rec arrow.RecordBatch) []string {
	names := make([]string, 0, rec.NumCols())
	for _, f := range rec.Schema().Fields() {
		if f.Name != "rowid" {
			names = append(names, f.Name)
		}
	}
	return names
}

// returning collects RETURNING rows, projected to DMLOptions.ReturningColumns.
type returning struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
}

func (r *returning) start(opts *catalog.DMLOptions) {
	if opts != nil && opts.Returning {
		r.schema = catalog.ProjectSchema(Schema, opts.ReturningColumns)
	}
}

func (r *returning) add(rows []Row) {
	if r.schema != nil && len(rows) > 0 {
		r.batches = append(r.batches, record(r.schema, rows))
	}
}

func (r *returning) result(affected int64) (*catalog.DMLResult, error) {
	res := &catalog.DMLResult{AffectedRows: affected}
	if len(r.batches) == 0 {
		return res, nil
	}
	reader, err := array.NewRecordReader(r.schema, r.batches)
	for _, b := range r.batches {
		b.Release()
	}
	if err != nil {
		return nil, err
	}
	res.ReturningData = reader
	return res, nil
}
