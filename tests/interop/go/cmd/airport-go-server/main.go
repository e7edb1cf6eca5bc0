// airport-go-server serves pyairport's demo catalog (protocol.md §4.0) with airport-go's own
// server: dml_schema.users (legacy UPDATE/DELETE), batch_schema.users (batch UPDATE/DELETE)
// and demo_schema.readonly (no DML) with one function of each kind (internal/functions), plus an in-memory transaction manager, in a catalog
// that creates, alters and drops schemas and tables (internal/ddl). The interop
// tests run the same scenarios against it and against pyairport and compare the answers.
//
// It prints "listening on grpc://HOST:PORT" once it accepts connections and serves until
// SIGINT/SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"

	"github.com/hugr-lab/airport-go"
	"github.com/hugr-lab/airport-go/catalog"

	"pyairport.dev/interop/internal/ddl"
	"pyairport.dev/interop/internal/functions"
	"pyairport.dev/interop/internal/team"
	"pyairport.dev/interop/internal/users"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	noTx := flag.Bool("no-transactions", false, "serve without a transaction manager")
	maxMessageMB := flag.Int("max-message-mb", 64, "largest gRPC message accepted and sent, in MiB")
	multi := flag.Bool("multi", false, "serve catalogs sales and hr (each the demo catalog, no transactions) from a MultiCatalogServer, with team.Tokens as Authenticator and CatalogAuthorizer")
	flag.Parse()
	if *multi {
		if err := serveMulti(*addr); err != nil {
			fmt.Fprintln(os.Stderr, "airport-go-server:", err)
			os.Exit(1)
		}
		return
	}
	if err := serve(*addr, !*noTx, *maxMessageMB<<20); err != nil {
		fmt.Fprintln(os.Stderr, "airport-go-server:", err)
		os.Exit(1)
	}
}

func str(s string) *string { return &s }
func num(n int64) *int64   { return &n }

func demoCatalog() (catalog.Catalog, error) {
	readonly := users.NewReadOnly("readonly", "a table that accepts no DML", []users.Row{
		{RowID: 1, ID: num(1), Name: str("Alice"), Email: str("alice@example.com")},
		{RowID: 2, ID: num(2), Name: str("Bob"), Email: str("bob@example.com")},
		{RowID: 3, ID: num(3), Name: str("Carol"), Email: str("carol@example.com")},
	})
	static, err := airport.NewCatalogBuilder().
		Schema("dml_schema").
		Table(users.NewLegacy("users", "users served through the legacy UPDATE/DELETE interfaces")).
		Schema("batch_schema").
		Table(users.NewBatch("users", "users served through the batch UPDATE/DELETE interfaces")).
		Schema("demo_schema").
		Table(readonly).
		ScalarFunc(functions.EmailDomain{}).
		TableFunc(functions.Series{}).
		TableFuncInOut(functions.Shouted{}).
		Build()
	if err != nil {
		return nil, err
	}
	return ddl.Wrap(static), nil // CREATE, ALTER and DROP beside the demo's static schemas
}

func serve(addr string, transactions bool, maxMessage int) error {
	cat, err := demoCatalog()
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	warn := slog.LevelWarn
	config := airport.ServerConfig{
		Catalog:        cat,
		Address:        lis.Addr().String(),
		MaxMessageSize: maxMessage,
		LogLevel:       &warn,
	}
	if transactions {
		config.TransactionManager = users.NewTransactions()
	}
	server := grpc.NewServer(airport.ServerOptions(config)...)
	if err := airport.NewServer(server, config); err != nil {
		return err
	}
	return run(server, lis)
}

func serveMulti(addr string) error {
	catalogs := []catalog.Catalog{}
	for _, name := range []string{"sales", "hr"} {
		cat, err := demoCatalog()
		if err != nil {
			return err
		}
		catalogs = append(catalogs, team.Named{Catalog: cat, CatalogName: name})
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	warn := slog.LevelWarn
	config := airport.MultiCatalogServerConfig{
		Catalogs: catalogs,
		Address:  lis.Addr().String(),
		Auth:     team.Tokens{},
		LogLevel: &warn,
	}
	server := grpc.NewServer(airport.MultiCatalogServerOptions(config)...)
	if _, err := airport.NewMultiCatalogServer(server, config); err != nil {
		return err
	}
	return run(server, lis)
}

func run(server *grpc.Server, lis net.Listener) error {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		server.GracefulStop()
	}()
	fmt.Printf("listening on grpc://%s\n", lis.Addr())
	return server.Serve(lis)
}
