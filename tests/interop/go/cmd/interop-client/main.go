// interop-client drives a running Airport server the way a Go user would, with arrow-go's
// Flight client: DoExchange INSERT/UPDATE/DELETE with and without RETURNING and inside a
// transaction, the spec-002 DoPut INSERT/UPDATE and "delete" action, and the error cases.
// It checks every answer against the contract and prints one line per scenario:
//
//	ok   exchange_insert
//	FAIL exchange_update_returning: RETURNING rows [...], want [...]
//
// It exits 1 when a scenario fails. -target airport-go leaves out the spec-002 scenarios
// (airport-go v0.2.1 no longer serves them), so the same expectations can be checked
// against the Go server itself. -dictionaries expects a server run with
// --string-dictionaries: every scan then checks that the table's string columns (the rowid
// aside) are declared and streamed as Arrow dictionaries, and reads their values through them.
// -scan schema.table reads one table instead of the scenarios and prints as JSON its rows,
// batches and each string column's values with their counts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	location := flag.String("location", "grpc://127.0.0.1:8815", "the server's grpc:// location")
	target := flag.String("target", "pyairport", "pyairport or airport-go (no spec-002 scenarios)")
	list := flag.Bool("list", false, "print the scenarios a -target runs, one per line, and exit")
	scanTable := flag.String("scan", "", "read schema.table, print its rows, batches and string values as JSON, and exit")
	flag.BoolVar(&wantDictionaries, "dictionaries", false,
		"the server sends string columns as dictionaries (pyairport --string-dictionaries)")
	flag.Parse()
	if *target != "pyairport" && *target != "airport-go" {
		fmt.Fprintln(os.Stderr, "interop-client: -target must be pyairport or airport-go")
		os.Exit(2)
	}
	if *list {
		for _, s := range scenarios {
			if !(s.spec002 && *target == "airport-go") {
				fmt.Println(s.name)
			}
		}
		return
	}
	client, err := flight.NewClientWithMiddleware(
		strings.TrimPrefix(*location, "grpc://"), nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop-client:", err)
		os.Exit(2)
	}
	defer client.Close()
	if *scanTable != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := printScanReport(ctx, client, *scanTable); err != nil {
			fmt.Fprintln(os.Stderr, "interop-client:", err)
			os.Exit(1)
		}
		return
	}
	failed := 0
	for _, s := range scenarios {
		if s.spec002 && *target == "airport-go" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := s.run(ctx, client)
		cancel()
		if err != nil {
			failed++
			fmt.Printf("FAIL %s: %v\n", s.name, err)
		} else {
			fmt.Printf("ok   %s\n", s.name)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}
