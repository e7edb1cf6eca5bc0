package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// answer is what a DoExchange DML call gave back.
type answer struct {
	schema   *arrow.Schema
	rows     []map[string]any // RETURNING rows, in order
	batches  []int64          // rows per RETURNING batch
	final    []byte           // app_metadata of the last, data-less message
	extraMD  int              // app_metadata attached to data messages (must stay 0)
	rpcError error
}

// finalMetadataSplitter hands schema and batch messages to arrow-go's reader and keeps the
// data-less final-metadata message for itself (arrow-go's IPC reader has no use for it).
type finalMetadataSplitter struct {
	stream flight.FlightService_DoExchangeClient
	final  []byte
	extra  int
}

func (s *finalMetadataSplitter) Recv() (*flight.FlightData, error) {
	for {
		fd, err := s.stream.Recv()
		if err != nil {
			return nil, err
		}
		if len(fd.DataHeader) == 0 {
			s.final = fd.AppMetadata
			continue
		}
		if len(fd.AppMetadata) > 0 {
			s.extra++
		}
		return fd, nil
	}
}

type dml struct {
	op, schema, table string
	returning         bool
	headers           map[string]string
	data              []arrow.RecordBatch
}

// exchange runs one DoExchange DML call the way DuckDB's Airport extension does: headers,
// a path descriptor with the schema, and with RETURNING one answer read per batch sent.
func exchange(ctx context.Context, client flight.Client, call dml) *answer {
	md := metadata.Pairs(
		"airport-operation", call.op,
		"airport-flight-path", call.schema+"/"+call.table,
	)
	if call.returning {
		md.Append("return-chunks", "1")
	}
	for k, v := range call.headers {
		md.Append(k, v)
	}
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, md))
	defer cancel()
	out := &answer{}
	stream, err := client.DoExchange(ctx)
	if err != nil {
		out.rpcError = err
		return out
	}
	writer := flight.NewRecordWriter(stream, ipc.WithSchema(call.data[0].Schema()))
	writer.SetFlightDescriptor(&flight.FlightDescriptor{
		Type: flight.DescriptorPATH, Path: []string{call.schema, call.table},
	})
	splitter := &finalMetadataSplitter{stream: stream}
	var reader *flight.Reader
	read := func() bool {
		if reader == nil {
			if reader, err = flight.NewRecordReader(splitter); err != nil {
				return false
			}
			out.schema = reader.Schema()
		}
		if !reader.Next() {
			return false
		}
		rec := reader.RecordBatch()
		out.batches = append(out.batches, rec.NumRows())
		out.rows = append(out.rows, rowMaps(rec)...)
		return true
	}
	for _, rec := range call.data {
		if err = writer.Write(rec); err != nil {
			break
		}
		if call.returning && !read() {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		// the server ended the call while we were sending: its status comes with Recv
		err = nil
	}
	writer.Close()
	if sendErr := stream.CloseSend(); err == nil {
		err = sendErr
	}
	if err == nil {
		for read() {
		}
		if reader == nil && err == nil {
			// no schema message: drain to the final metadata or the status
			_, err = splitter.Recv()
		}
		if reader != nil {
			err = reader.Err()
			reader.Release()
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		out.rpcError = err
	}
	out.final = splitter.final
	out.extraMD = splitter.extra
	return out
}

// rowMaps turns a batch into one map per row (column name → Go value, nil for NULL).
func rowMaps(rec arrow.RecordBatch) []map[string]any {
	rows := make([]map[string]any, rec.NumRows())
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for c, f := range rec.Schema().Fields() {
		col := rec.Column(c)
		for i := range rows {
			if col.IsNull(i) {
				rows[i][f.Name] = nil
				continue
			}
			switch a := col.(type) {
			case *array.Int64:
				rows[i][f.Name] = a.Value(i)
			case *array.String:
				rows[i][f.Name] = a.Value(i)
			case *array.Dictionary:
				rows[i][f.Name] = a.Dictionary().(*array.String).Value(a.GetValueIndex(i))
			default:
				rows[i][f.Name] = col.ValueStr(i)
			}
		}
	}
	return rows
}

// scan reads a table the way a Go Flight user would: GetFlightInfo, then DoGet its ticket.
func scan(ctx context.Context, client flight.Client, schema, table string) ([]map[string]any, error) {
	var rows []map[string]any
	err := scanBatches(ctx, client, schema, table, func(batch arrow.RecordBatch) {
		rows = append(rows, rowMaps(batch)...)
	})
	return rows, err
}

// scanBatches hands each batch of schema.table to each, read through GetFlightInfo and a DoGet
// of every endpoint, after checking how the FlightInfo and each stream type string columns.
func scanBatches(ctx context.Context, client flight.Client, schema, table string, each func(arrow.RecordBatch)) error {
	info, err := client.GetFlightInfo(ctx, &flight.FlightDescriptor{
		Type: flight.DescriptorPATH, Path: []string{schema, table},
	})
	if err != nil {
		return err
	}
	declared, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	if err := checkStringTypes("FlightInfo", declared); err != nil {
		return err
	}
	for _, endpoint := range info.Endpoint {
		stream, err := client.DoGet(ctx, endpoint.Ticket)
		if err != nil {
			return err
		}
		reader, err := flight.NewRecordReader(stream)
		if err != nil {
			return err
		}
		if err := checkStringTypes("DoGet stream", reader.Schema()); err != nil {
			reader.Release()
			return err
		}
		for reader.Next() {
			each(reader.RecordBatch())
		}
		err = reader.Err()
		reader.Release()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return nil
}

// wantDictionaries: the server was started with --string-dictionaries (the -dictionaries flag).
var wantDictionaries bool

// checkStringTypes checks how a scanned table's string columns are typed: as dictionaries of
// strings where wantDictionaries (the rowid, which DuckDB hides and filters by, stays a plain
// column), as plain strings otherwise. With dictionaries at least one column must be one, so
// that the check cannot pass on a table without strings.
func checkStringTypes(where string, s *arrow.Schema) error {
	dictionaries := 0
	for _, f := range s.Fields() {
		isRowID := f.Metadata.FindKey("is_rowid") >= 0
		switch t := f.Type.(type) {
		case *arrow.DictionaryType:
			if !wantDictionaries || isRowID {
				return fmt.Errorf("%s: column %s is %s, want a plain column", where, f.Name, t)
			}
			if t.ValueType.ID() != arrow.STRING && t.ValueType.ID() != arrow.LARGE_STRING {
				return fmt.Errorf("%s: column %s is %s, want a dictionary of strings", where, f.Name, t)
			}
			dictionaries++
		case *arrow.StringType, *arrow.LargeStringType:
			if wantDictionaries && !isRowID {
				return fmt.Errorf("%s: column %s is %s, want a dictionary", where, f.Name, t)
			}
		}
	}
	if wantDictionaries && dictionaries == 0 {
		return fmt.Errorf("%s: no dictionary column in %s", where, s)
	}
	return nil
}

// action runs a DoAction and returns the bodies of its results.
func action(ctx context.Context, client flight.Client, kind string, body []byte, headers ...string) ([][]byte, error) {
	if len(headers) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, headers...)
	}
	stream, err := client.DoAction(ctx, &flight.Action{Type: kind, Body: body})
	if err != nil {
		return nil, err
	}
	var bodies [][]byte
	for {
		result, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return bodies, nil
		}
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, result.Body)
	}
}

// usersBatch builds an INSERT batch (id, name, email); a nil id is sent as NULL.
func usersBatch(ids []*int64, names []string) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "email", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, id := range ids {
		if id == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(*id)
		}
		b.Field(1).(*array.StringBuilder).Append(names[i])
		b.Field(2).(*array.StringBuilder).Append(strings.ToLower(names[i]) + "@example.com")
	}
	return b.NewRecordBatch()
}

// setBatch builds an UPDATE batch as DuckDB sends it: the SET column, then rowid last.
func setBatch(column string, values []string, rowids []int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: column, Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "rowid", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(values, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(rowids, nil)
	return b.NewRecordBatch()
}

// rowidBatch builds a DELETE batch: one column named rowid.
func rowidBatch(rowids []int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "rowid", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(rowids, nil)
	return b.NewRecordBatch()
}

// statusOf is "CODE: message" of a gRPC error, or "OK".
func statusOf(err error) string {
	if err == nil {
		return "OK"
	}
	if s, ok := status.FromError(err); ok {
		return fmt.Sprintf("%s: %s", s.Code(), s.Message())
	}
	return err.Error()
}
