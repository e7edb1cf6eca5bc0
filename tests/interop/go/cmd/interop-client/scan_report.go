package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
)

// scanReport is what -scan prints of a table read the way a Go Flight user reads it: enough
// for the caller to check every value against the table it served.
type scanReport struct {
	Rows    int64                       `json:"rows"`
	Batches int                         `json:"batches"`
	Values  map[string]map[string]int64 `json:"values"` // string column → value → rows ("" key: NULL)
	Nulls   map[string]int64            `json:"nulls"`
}

// reportScan reads schema.table (given as "schema.table") with scan's type checks and counts
// each string column's values, whether they come as strings or as dictionaries.
func reportScan(ctx context.Context, client flight.Client, qualified string) (*scanReport, error) {
	schema, table, ok := strings.Cut(qualified, ".")
	if !ok {
		return nil, fmt.Errorf("-scan %q: want schema.table", qualified)
	}
	report := &scanReport{Values: map[string]map[string]int64{}, Nulls: map[string]int64{}}
	err := scanBatches(ctx, client, schema, table, func(batch arrow.RecordBatch) {
		report.Batches++
		report.Rows += batch.NumRows()
		for c, f := range batch.Schema().Fields() {
			var value func(int) string
			switch a := batch.Column(c).(type) {
			case *array.String:
				value = a.Value
			case *array.Dictionary:
				words := a.Dictionary().(*array.String)
				value = func(i int) string { return words.Value(a.GetValueIndex(i)) }
			default:
				continue
			}
			counts := report.Values[f.Name]
			if counts == nil {
				counts = map[string]int64{}
				report.Values[f.Name] = counts
			}
			col := batch.Column(c)
			for i := 0; i < col.Len(); i++ {
				if col.IsNull(i) {
					report.Nulls[f.Name]++
				} else {
					counts[value(i)]++
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return report, nil
}

func printScanReport(ctx context.Context, client flight.Client, qualified string) error {
	report, err := reportScan(ctx, client, qualified)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(report)
}
