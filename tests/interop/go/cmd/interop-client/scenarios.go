package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/grpc/metadata"

	"github.com/hugr-lab/airport-go/catalog"
)

type scenario struct {
	name    string
	spec002 bool // the DoPut/DoAction protocol of spec 002 (pyairport only)
	run     func(context.Context, flight.Client) error
}

var scenarios = []scenario{
	{"exchange_insert", false, exchangeInsert},
	{"exchange_insert_returning_lock_step", false, exchangeInsertReturning},
	{"exchange_update_legacy", false, exchangeUpdateLegacy},
	{"exchange_update_batch_returning", false, exchangeUpdateBatchReturning},
	{"exchange_delete_legacy_returning", false, exchangeDeleteLegacyReturning},
	{"exchange_delete_batch", false, exchangeDeleteBatch},
	{"exchange_in_transaction", false, exchangeInTransaction},
	{"exchange_errors", false, exchangeErrors},
	{"transaction_status_unknown", false, transactionStatusUnknown},
	{"doput_insert", true, doPutInsert},
	{"doput_update_returning", true, doPutUpdateReturning},
	{"action_delete_with_transaction", true, actionDeleteWithTransaction},
	{"spec002_errors", true, spec002Errors},
}

func ptr(v int64) *int64 { return &v }

// finalMetadata is the 24 bytes every successful DoExchange DML ends with (protocol §1.4).
func finalMetadata(n uint64) []byte {
	out := append([]byte{0x81, 0xad}, "total_changed"...)
	out = append(out, 0xcf)
	return binary.BigEndian.AppendUint64(out, n)
}

func checkFinal(a *answer, n uint64) error {
	if a.rpcError != nil {
		return fmt.Errorf("status %s", statusOf(a.rpcError))
	}
	if !bytes.Equal(a.final, finalMetadata(n)) {
		return fmt.Errorf("final metadata % x, want % x", a.final, finalMetadata(n))
	}
	if a.extraMD != 0 {
		return fmt.Errorf("%d data messages carried app_metadata", a.extraMD)
	}
	return nil
}

func fieldNames(s *arrow.Schema) []string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	return names
}

func expect(what string, got, want any) error {
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s %v, want %v", what, got, want)
	}
	return nil
}

// byID returns the rows of schema.users whose id is one of ids, in ids order.
func byID(ctx context.Context, client flight.Client, schema string, ids ...int64) ([]map[string]any, error) {
	rows, err := scan(ctx, client, schema, "users")
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, id := range ids {
		for _, r := range rows {
			if r["id"] == id {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func rowids(rows []map[string]any) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r["rowid"].(int64))
	}
	return out
}

func column(rows []map[string]any, name string) []any {
	var out []any
	for _, r := range rows {
		out = append(out, r[name])
	}
	return out
}

func insertUsers(ctx context.Context, client flight.Client, schema string, ids ...int64) error {
	var ps []*int64
	var names []string
	for _, id := range ids {
		ps = append(ps, ptr(id))
		names = append(names, fmt.Sprintf("user%d", id))
	}
	a := exchange(ctx, client, dml{op: "insert", schema: schema, table: "users",
		data: []arrow.RecordBatch{usersBatch(ps, names)}})
	return checkFinal(a, uint64(len(ids)))
}

// --- DoExchange (protocol §1, scenarios §4.1-4.2) ------------------------------------------

func exchangeInsert(ctx context.Context, client flight.Client) error {
	a := exchange(ctx, client, dml{op: "insert", schema: "dml_schema", table: "users",
		data: []arrow.RecordBatch{usersBatch([]*int64{ptr(101), nil, ptr(103)}, []string{"Ann", "Bob", "Cy"})}})
	if err := checkFinal(a, 3); err != nil {
		return err
	}
	if err := expect("output schema", fieldNames(a.schema), []string{"rowid", "id", "name", "email"}); err != nil {
		return err
	}
	if idx := catalog.FindRowIDColumn(a.schema); idx != 0 {
		return fmt.Errorf("rowid column at %d, want 0 with is_rowid metadata", idx)
	}
	rows, err := byID(ctx, client, "dml_schema", 101, 103)
	if err != nil {
		return err
	}
	if err := expect("names", column(rows, "name"), []any{"Ann", "Cy"}); err != nil {
		return err
	}
	// the row sent with a NULL id took its rowid as id
	all, err := scan(ctx, client, "dml_schema", "users")
	if err != nil {
		return err
	}
	for _, r := range all {
		if r["name"] == "Bob" && r["id"] != r["rowid"] {
			return fmt.Errorf("NULL id became %v, want the rowid %v", r["id"], r["rowid"])
		}
	}
	return nil
}

func exchangeInsertReturning(ctx context.Context, client flight.Client) error {
	batches := []arrow.RecordBatch{
		usersBatch([]*int64{ptr(201), ptr(202)}, []string{"a", "b"}),
		usersBatch([]*int64{ptr(203)}, []string{"c"}),
	}
	a := exchange(ctx, client, dml{op: "insert", schema: "batch_schema", table: "users", returning: true, data: batches})
	if err := checkFinal(a, 3); err != nil {
		return err
	}
	if err := expect("RETURNING schema", fieldNames(a.schema), []string{"id", "name", "email"}); err != nil {
		return err
	}
	if err := expect("answer batch sizes", a.batches, []int64{2, 1}); err != nil {
		return err
	}
	return expect("RETURNING ids", column(a.rows, "id"), []any{int64(201), int64(202), int64(203)})
}

func exchangeUpdateLegacy(ctx context.Context, client flight.Client) error {
	if err := insertUsers(ctx, client, "dml_schema", 301, 302); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "dml_schema", 302)
	if err != nil {
		return err
	}
	a := exchange(ctx, client, dml{op: "update", schema: "dml_schema", table: "users",
		data: []arrow.RecordBatch{setBatch("name", []string{"Updated"}, rowids(rows))}})
	if err := checkFinal(a, 1); err != nil {
		return err
	}
	after, err := byID(ctx, client, "dml_schema", 301, 302)
	if err != nil {
		return err
	}
	return expect("names", column(after, "name"), []any{"user301", "Updated"})
}

func exchangeUpdateBatchReturning(ctx context.Context, client flight.Client) error {
	if err := insertUsers(ctx, client, "batch_schema", 401, 402); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "batch_schema", 401, 402)
	if err != nil {
		return err
	}
	a := exchange(ctx, client, dml{op: "update", schema: "batch_schema", table: "users", returning: true,
		data: []arrow.RecordBatch{setBatch("email", []string{"x@new", "y@new"}, rowids(rows))}})
	if err := checkFinal(a, 2); err != nil {
		return err
	}
	// UPDATE answers with the input schema; the rowid the table does not return is NULL
	if err := expect("output schema", fieldNames(a.schema), []string{"email", "rowid"}); err != nil {
		return err
	}
	return expect("RETURNING emails", column(a.rows, "email"), []any{"x@new", "y@new"})
}

func exchangeDeleteLegacyReturning(ctx context.Context, client flight.Client) error {
	if err := insertUsers(ctx, client, "dml_schema", 501, 502, 503); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "dml_schema", 501, 503)
	if err != nil {
		return err
	}
	a := exchange(ctx, client, dml{op: "delete", schema: "dml_schema", table: "users", returning: true,
		data: []arrow.RecordBatch{rowidBatch(rowids(rows))}})
	if err := checkFinal(a, 2); err != nil {
		return err
	}
	if err := expect("RETURNING ids", column(a.rows, "id"), []any{int64(501), int64(503)}); err != nil {
		return err
	}
	left, err := byID(ctx, client, "dml_schema", 501, 502, 503)
	if err != nil {
		return err
	}
	return expect("ids left", column(left, "id"), []any{int64(502)})
}

func exchangeDeleteBatch(ctx context.Context, client flight.Client) error {
	if err := insertUsers(ctx, client, "batch_schema", 601, 602); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "batch_schema", 601, 602)
	if err != nil {
		return err
	}
	a := exchange(ctx, client, dml{op: "delete", schema: "batch_schema", table: "users",
		data: []arrow.RecordBatch{rowidBatch(rowids(rows))}})
	if err := checkFinal(a, 2); err != nil {
		return err
	}
	left, err := byID(ctx, client, "batch_schema", 601, 602)
	if err != nil {
		return err
	}
	return expect("rows left", len(left), 0)
}

type txStatus struct {
	Status string `msgpack:"status"`
	Exists bool   `msgpack:"exists"`
}

func beginTransaction(ctx context.Context, client flight.Client) (string, error) {
	body, _ := msgpack.Marshal(map[string]string{"catalog_name": ""})
	results, err := action(ctx, client, "create_transaction", body)
	if err != nil {
		return "", err
	}
	var out struct {
		Identifier *string `msgpack:"identifier"`
	}
	if err := msgpack.Unmarshal(results[0], &out); err != nil {
		return "", err
	}
	if out.Identifier == nil || len(*out.Identifier) != 36 {
		return "", fmt.Errorf("create_transaction gave %v, want a UUID", out.Identifier)
	}
	return *out.Identifier, nil
}

func transactionStatus(ctx context.Context, client flight.Client, id string) (txStatus, error) {
	body, _ := msgpack.Marshal(map[string]string{"transaction_id": id})
	results, err := action(ctx, client, "get_transaction_status", body)
	var out txStatus
	if err == nil {
		err = msgpack.Unmarshal(results[0], &out)
	}
	return out, err
}

func exchangeInTransaction(ctx context.Context, client flight.Client) error {
	tx, err := beginTransaction(ctx, client)
	if err != nil {
		return err
	}
	if s, err := transactionStatus(ctx, client, tx); err != nil || s != (txStatus{"active", true}) {
		return fmt.Errorf("new transaction status %+v, %v", s, err)
	}
	a := exchange(ctx, client, dml{op: "insert", schema: "dml_schema", table: "users",
		headers: map[string]string{"airport-transaction-id": tx},
		data:    []arrow.RecordBatch{usersBatch([]*int64{ptr(701)}, []string{"tx"})}})
	if err := checkFinal(a, 1); err != nil {
		return err
	}
	s, err := transactionStatus(ctx, client, tx)
	if err != nil {
		return err
	}
	return expect("status after the statement", s, txStatus{"committed", true})
}

func transactionStatusUnknown(ctx context.Context, client flight.Client) error {
	s, err := transactionStatus(ctx, client, "non-existent-tx-id")
	if err != nil {
		return err
	}
	return expect("status", s.Exists, false)
}

func exchangeErrors(ctx context.Context, client flight.Client) error {
	insert := []arrow.RecordBatch{usersBatch([]*int64{ptr(801)}, []string{"e"})}
	cases := []struct {
		call dml
		want string
	}{
		{dml{op: "insert", schema: "dml_schema", table: "nope", data: insert},
			"NotFound: table 'dml_schema.nope' not found"},
		{dml{op: "insert", schema: "nope", table: "users", data: insert},
			"NotFound: schema 'nope' not found"},
		{dml{op: "insert", schema: "demo_schema", table: "readonly", data: insert},
			"FailedPrecondition: table 'readonly' does not support INSERT operations"},
		{dml{op: "delete", schema: "demo_schema", table: "readonly", data: []arrow.RecordBatch{rowidBatch([]int64{1})}},
			"FailedPrecondition: table 'readonly' does not support DELETE operations"},
		{dml{op: "update", schema: "dml_schema", table: "users", data: insert},
			"InvalidArgument: UPDATE requires rowid column in input schema"},
		{dml{op: "merge", schema: "dml_schema", table: "users", data: insert},
			"InvalidArgument: invalid airport-operation: merge (expected scalar_function, table_function, table_function_in_out, insert, update, or delete)"},
	}
	for _, c := range cases {
		got := statusOf(exchange(ctx, client, c.call).rpcError)
		if got != c.want {
			return fmt.Errorf("%s %s.%s: %q, want %q", c.call.op, c.call.schema, c.call.table, got, c.want)
		}
	}
	// no airport-operation header at all
	stream, err := client.DoExchange(metadata.AppendToOutgoingContext(ctx, "airport-flight-path", "dml_schema/users"))
	if err == nil {
		_ = stream.CloseSend()
		_, err = stream.Recv()
	}
	if got := statusOf(err); got != "InvalidArgument: missing airport-operation header" {
		return fmt.Errorf("no operation header: %q", got)
	}
	return nil
}

// --- spec 002: DoPut INSERT/UPDATE, DoAction delete ------------------------------------------

type dmlResponse struct {
	Status        string `msgpack:"status"`
	AffectedRows  int64  `msgpack:"affected_rows"`
	ReturningData []byte `msgpack:"returning_data"`
}

// doPut sends one DoPut with a JSON descriptor, as spec 002's Go example does.
func doPut(ctx context.Context, client flight.Client, descriptor map[string]any, data arrow.RecordBatch, headers ...string) (dmlResponse, error) {
	var response dmlResponse
	cmd, _ := json.Marshal(descriptor)
	if len(headers) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, headers...)
	}
	stream, err := client.DoPut(ctx)
	if err != nil {
		return response, err
	}
	writer := flight.NewRecordWriter(stream, ipc.WithSchema(data.Schema()))
	writer.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	// io.EOF: the server ended the call while we were sending; its status comes with Recv
	if err := writer.Write(data); err != nil && !errors.Is(err, io.EOF) {
		return response, err
	}
	writer.Close()
	if err := stream.CloseSend(); err != nil && !errors.Is(err, io.EOF) {
		return response, err
	}
	result, err := stream.Recv()
	if err != nil {
		return response, err
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		return response, fmt.Errorf("a second PutResult or error after the answer: %v", err)
	}
	return response, msgpack.Unmarshal(result.AppMetadata, &response)
}

func returnedRows(data []byte) ([]map[string]any, error) {
	reader, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer reader.Release()
	var rows []map[string]any
	for reader.Next() {
		rows = append(rows, rowMaps(reader.RecordBatch())...)
	}
	return rows, nil
}

func doPutInsert(ctx context.Context, client flight.Client) error {
	response, err := doPut(ctx, client, map[string]any{
		"operation": "insert", "schema_name": "dml_schema", "table_name": "users",
	}, usersBatch([]*int64{ptr(901), ptr(902)}, []string{"put1", "put2"}))
	if err != nil {
		return err
	}
	if err := expect("response", response, dmlResponse{Status: "success", AffectedRows: 2}); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "dml_schema", 901, 902)
	if err != nil {
		return err
	}
	return expect("names", column(rows, "name"), []any{"put1", "put2"})
}

func doPutUpdateReturning(ctx context.Context, client flight.Client) error {
	if err := insertUsers(ctx, client, "batch_schema", 1001); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "batch_schema", 1001)
	if err != nil {
		return err
	}
	response, err := doPut(ctx, client, map[string]any{
		"operation": "update", "schema_name": "batch_schema", "table_name": "users",
		"row_ids": rowids(rows), "returning": true,
	}, usersBatch([]*int64{ptr(1001)}, []string{"Renamed"}))
	if err != nil {
		return err
	}
	if response.Status != "success" || response.AffectedRows != 1 {
		return fmt.Errorf("response %+v", response)
	}
	returned, err := returnedRows(response.ReturningData)
	if err != nil {
		return err
	}
	return expect("RETURNING names", column(returned, "name"), []any{"Renamed"})
}

func actionDeleteWithTransaction(ctx context.Context, client flight.Client) error {
	if err := insertUsers(ctx, client, "dml_schema", 1101, 1102); err != nil {
		return err
	}
	rows, err := byID(ctx, client, "dml_schema", 1101, 1102)
	if err != nil {
		return err
	}
	tx, err := beginTransaction(ctx, client)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{
		"schema_name": "dml_schema", "table_name": "users", "row_ids": rowids(rows), "returning": true,
	})
	results, err := action(ctx, client, "delete", body, "x-transaction-id", tx)
	if err != nil {
		return err
	}
	var response struct {
		Status        string `json:"status"`
		AffectedRows  int64  `json:"affected_rows"`
		ReturningData string `json:"returning_data"`
	}
	if err := json.Unmarshal(results[0], &response); err != nil {
		return err
	}
	if response.Status != "success" || response.AffectedRows != 2 {
		return fmt.Errorf("response %+v", response)
	}
	data, err := base64.StdEncoding.DecodeString(response.ReturningData)
	if err != nil {
		return err
	}
	returned, err := returnedRows(data)
	if err != nil {
		return err
	}
	if err := expect("RETURNING ids", column(returned, "id"), []any{int64(1101), int64(1102)}); err != nil {
		return err
	}
	s, err := transactionStatus(ctx, client, tx)
	if err != nil {
		return err
	}
	return expect("transaction", s, txStatus{"committed", true})
}

func spec002Errors(ctx context.Context, client flight.Client) error {
	batch := usersBatch([]*int64{ptr(1201)}, []string{"e"})
	puts := []struct {
		descriptor map[string]any
		want       string
	}{
		{map[string]any{"operation": "update", "schema_name": "dml_schema", "table_name": "users", "row_ids": []int64{}},
			"InvalidArgument: row_ids cannot be empty for UPDATE"},
		{map[string]any{"operation": "update", "schema_name": "dml_schema", "table_name": "users", "row_ids": []int64{1, 2}},
			"InvalidArgument: row_ids count (2) does not match input rows (1)"},
		{map[string]any{"operation": "insert", "schema_name": "dml_schema", "table_name": "events"},
			"NotFound: table 'dml_schema.events' not found"},
		{map[string]any{"operation": "insert", "schema_name": "demo_schema", "table_name": "readonly"},
			"FailedPrecondition: table 'readonly' does not support INSERT operations"},
	}
	for _, p := range puts {
		_, err := doPut(ctx, client, p.descriptor, batch)
		if got := statusOf(err); got != p.want {
			return fmt.Errorf("DoPut %v: %q, want %q", p.descriptor, got, p.want)
		}
	}
	actions := []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"schema_name": "dml_schema", "table_name": "users", "row_ids": []int64{}},
			"InvalidArgument: row_ids cannot be empty for DELETE"},
		{map[string]any{"schema_name": "demo_schema", "table_name": "readonly", "row_ids": []int64{1}},
			"FailedPrecondition: table 'readonly' does not support DELETE (no rowid)"},
	}
	for _, a := range actions {
		body, _ := json.Marshal(a.body)
		_, err := action(ctx, client, "delete", body)
		if got := statusOf(err); got != a.want {
			return fmt.Errorf("delete %v: %q, want %q", a.body, got, a.want)
		}
	}
	return nil
}
