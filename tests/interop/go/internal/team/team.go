// Package team is the parity suite's multi-catalog setup on airport-go's side: catalogs named
// for routing by the airport-catalog header, and an Authenticator that is also a
// CatalogAuthorizer, whose tokens and grants pyairport's side of the suite mirrors
// (tests/interop/test_parity_multicatalog.py).
package team

import (
	"context"
	"errors"
	"fmt"

	"github.com/hugr-lab/airport-go/auth"
	"github.com/hugr-lab/airport-go/catalog"
)

// Named gives a catalog the name a MultiCatalogServer routes by.
type Named struct {
	catalog.Catalog
	CatalogName string
}

// Name implements catalog.NamedCatalog.
func (n Named) Name() string { return n.CatalogName }

// Tokens: "admin-token" is admin, who may use every catalog; "reader-token" is reader, who
// may use "sales" only.
type Tokens struct{}

var errUnknownToken = errors.New("unknown token")

// Authenticate implements auth.Authenticator.
func (Tokens) Authenticate(_ context.Context, token string) (string, error) {
	switch token {
	case "admin-token":
		return "admin", nil
	case "reader-token":
		return "reader", nil
	}
	return "", errUnknownToken
}

// AuthorizeCatalog implements auth.CatalogAuthorizer.
func (Tokens) AuthorizeCatalog(ctx context.Context, name string) (context.Context, error) {
	identity := auth.IdentityFromContext(ctx)
	if identity == "admin" || (identity == "reader" && name == "sales") {
		return ctx, nil
	}
	return ctx, fmt.Errorf("%q has no grant on catalog %q", identity, name)
}
