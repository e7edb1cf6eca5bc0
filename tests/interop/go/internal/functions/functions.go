// Package functions is the demo catalog's one function of each kind, as pyairport's demo
// serves them (runtime/pyairport/demo_functions.py): the same names, types, rows and errors,
// so DuckDB sessions calling them compare answer for answer.
package functions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hugr-lab/airport-go/catalog"
)

// MaxSeriesRows is the most rows series answers.
const MaxSeriesRows = 10_000_000

const seriesBatchRows = 65536

// EmailDomain is the scalar function email_domain(email): the text after the last "@", or
// null when there is none.
type EmailDomain struct{}

func (EmailDomain) Name() string    { return "email_domain" }
func (EmailDomain) Comment() string { return "the domain of an e-mail address" }
func (EmailDomain) Signature() catalog.FunctionSignature {
	return catalog.FunctionSignature{
		Parameters: []arrow.DataType{arrow.BinaryTypes.String},
		ReturnType: arrow.BinaryTypes.String,
	}
}

func (EmailDomain) Execute(ctx context.Context, input arrow.RecordBatch) (arrow.Array, error) {
	emails, ok := input.Column(0).(*array.String)
	if !ok {
		return nil, fmt.Errorf("email_domain takes a string, got %s", input.Column(0).DataType())
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < emails.Len(); i++ {
		at := strings.LastIndex(emails.Value(i), "@")
		if emails.IsNull(i) || at < 0 {
			b.AppendNull()
			continue
		}
		b.Append(emails.Value(i)[at+1:])
	}
	return b.NewArray(), nil
}

var seriesSchema = arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// Series is the table function series(start, stop): n from start to stop.
type Series struct{}

func (Series) Name() string    { return "series" }
func (Series) Comment() string { return "the integers from start to stop" }
func (Series) Signature() catalog.FunctionSignature {
	return catalog.FunctionSignature{
		Parameters: []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64},
	}
}

func (Series) SchemaForParameters(ctx context.Context, params []any) (*arrow.Schema, error) {
	return seriesSchema, nil
}

func (Series) Execute(ctx context.Context, params []any, opts *catalog.ScanOptions) (array.RecordReader, error) {
	start, startOK := params[0].(int64)
	stop, stopOK := params[1].(int64)
	if len(params) != 2 || !startOK || !stopOK {
		return nil, errors.New("series: start and stop must not be null")
	}
	if stop-start >= MaxSeriesRows {
		return nil, fmt.Errorf("series: at most %d rows", MaxSeriesRows)
	}
	var batches []arrow.RecordBatch
	for low := start; low <= stop; low += seriesBatchRows {
		high := min(low+seriesBatchRows-1, stop)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for n := low; n <= high; n++ {
			b.Append(n)
		}
		column := b.NewArray()
		b.Release()
		batches = append(batches, array.NewRecordBatch(seriesSchema, []arrow.Array{column}, high-low+1))
		column.Release()
	}
	return array.NewRecordReader(seriesSchema, batches)
}

// Shouted is the in-out table function shouted(rows): the rows with every string column in
// upper case.
type Shouted struct{}

func (Shouted) Name() string    { return "shouted" }
func (Shouted) Comment() string { return "the rows with their text in upper case" }
func (Shouted) Signature() catalog.FunctionSignature {
	return catalog.FunctionSignature{Parameters: []arrow.DataType{arrow.BinaryTypes.String}}
}

func (Shouted) SchemaForParameters(ctx context.Context, params []any, inputSchema *arrow.Schema) (*arrow.Schema, error) {
	if inputSchema == nil {
		return nil, errors.New("shouted: no rows")
	}
	return inputSchema, nil
}

func (Shouted) Execute(ctx context.Context, params []any, input array.RecordReader, opts *catalog.ScanOptions) (array.RecordReader, error) {
	var out []arrow.RecordBatch
	for input.Next() {
		batch := input.RecordBatch()
		columns := make([]arrow.Array, batch.NumCols())
		for i, column := range batch.Columns() {
			columns[i] = upper(column)
		}
		out = append(out, array.NewRecordBatch(input.Schema(), columns, batch.NumRows()))
		for _, c := range columns {
			c.Release()
		}
	}
	if err := input.Err(); err != nil {
		return nil, err
	}
	return array.NewRecordReader(input.Schema(), out)
}

func upper(column arrow.Array) arrow.Array {
	text, ok := column.(*array.String)
	if !ok {
		column.Retain()
		return column
	}
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < text.Len(); i++ {
		if text.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(strings.ToUpper(text.Value(i)))
		}
	}
	return b.NewArray()
}
