// Package users holds the tables of the Go reference server: the demo catalog of
// pyairport (protocol.md §4.0) written against airport-go's catalog interfaces, so the same
// scenarios can be run against both servers and their answers compared.
package users

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Schema is the users table: rowid (int64, is_rowid), id int64, name utf8, email utf8.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "rowid", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
		Metadata: arrow.NewMetadata([]string{"is_rowid"}, []string{"true"})},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "email", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// Row is one stored row; nil pointers are SQL NULLs.
type Row struct {
	RowID int64
	ID    *int64
	Name  *string
	Email *string
	dead  bool // deleted; dropped at the next compaction
}

// store keeps rows ordered by rowid. Rowids only grow (they are assigned on insert and
// never reused), so appends keep the order and a lookup is a binary search. DELETE marks
// rows dead and the slice is compacted once half of it is dead, so deleting k rows costs
// O(k log n) amortised rather than a pass over the table per call.
type store struct {
	mu   sync.RWMutex
	rows []Row
	dead int
	next int64
}

func newStore(seed []Row) *store {
	s := &store{rows: append([]Row(nil), seed...), next: 1}
	for _, r := range seed {
		if r.RowID >= s.next {
			s.next = r.RowID + 1
		}
	}
	return s
}

// position of the live row with this rowid in s.rows, or -1. Callers hold the lock.
func (s *store) position(rowid int64) int {
	i := sort.Search(len(s.rows), func(i int) bool { return s.rows[i].RowID >= rowid })
	if i < len(s.rows) && s.rows[i].RowID == rowid && !s.rows[i].dead {
		return i
	}
	return -1
}

// kill marks the row at p deleted. Callers hold the write lock.
func (s *store) kill(p int) {
	s.rows[p].dead = true
	s.dead++
	if s.dead > len(s.rows)/2 {
		live := s.rows[:0]
		for _, r := range s.rows {
			if !r.dead {
				live = append(live, r)
			}
		}
		clear(s.rows[len(live):])
		s.rows, s.dead = live, 0
	}
}

// live is a copy of the rows that are not deleted. Callers hold the lock.
func (s *store) live() []Row {
	out := make([]Row, 0, len(s.rows)-s.dead)
	for _, r := range s.rows {
		if !r.dead {
			out = append(out, r)
		}
	}
	return out
}

// rowsFromBatch reads the user columns of rec by name. Unknown columns are an error
// (the wording of protocol.md §4.0's fixture); the rowid column is skipped.
func rowsFromBatch(rec arrow.RecordBatch) ([]Row, error) {
	out := make([]Row, rec.NumRows())
	for c, f := range rec.Schema().Fields() {
		col := rec.Column(c)
		switch f.Name {
		case "rowid":
			continue
		case "id":
			ints, ok := col.(*array.Int64)
			if !ok {
				return nil, fmt.Errorf("column id: expected int64, got %s", col.DataType())
			}
			for i := range out {
				if ints.IsValid(i) {
					v := ints.Value(i)
					out[i].ID = &v
				}
			}
		case "name", "email":
			strs, ok := col.(*array.String)
			if !ok {
				return nil, fmt.Errorf("column %s: expected utf8, got %s", f.Name, col.DataType())
			}
			for i := range out {
				if strs.IsValid(i) {
					v := strings.Clone(strs.Value(i))
					if f.Name == "name" {
						out[i].Name = &v
					} else {
						out[i].Email = &v
					}
				}
			}
		default:
			return nil, fmt.Errorf("column %s not found in table schema", f.Name)
		}
	}
	return out, nil
}

// setColumns copies the columns present in rec (by name) from src into dst.
func setColumns(dst *Row, src Row, names []string) {
	for _, n := range names {
		switch n {
		case "id":
			dst.ID = src.ID
		case "name":
			dst.Name = src.Name
		case "email":
			dst.Email = src.Email
		}
	}
}

// record builds one batch of rows with the given schema (a projection of Schema).
func record(schema *arrow.Schema, rows []Row) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for c, f := range schema.Fields() {
		switch f.Name {
		case "rowid", "id":
			ib := b.Field(c).(*array.Int64Builder)
			ib.Reserve(len(rows))
			for _, r := range rows {
				if f.Name == "rowid" {
					ib.UnsafeAppend(r.RowID)
				} else if r.ID != nil {
					ib.UnsafeAppend(*r.ID)
				} else {
					ib.UnsafeAppendBoolToBitmap(false)
				}
			}
		case "name", "email":
			sb := b.Field(c).(*array.StringBuilder)
			sb.Reserve(len(rows))
			for _, r := range rows {
				v := r.Name
				if f.Name == "email" {
					v = r.Email
				}
				if v != nil {
					sb.Append(*v)
				} else {
					sb.AppendNull()
				}
			}
		}
	}
	return b.NewRecordBatch()
}
