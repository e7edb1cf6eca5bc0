package users

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"

	"github.com/hugr-lab/airport-go/catalog"
)

// Transactions is an in-memory catalog.TransactionManager: ids are random UUIDs, commit
// and rollback are idempotent as the interface requires.
type Transactions struct {
	mu     sync.Mutex
	states map[string]catalog.TransactionState
}

var _ catalog.TransactionManager = (*Transactions)(nil)

func NewTransactions() *Transactions {
	return &Transactions{states: map[string]catalog.TransactionState{}}
}

func (m *Transactions) BeginTransaction(context.Context) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	m.mu.Lock()
	m.states[id] = catalog.TransactionActive
	m.mu.Unlock()
	return id, nil
}

func (m *Transactions) finish(txID string, state catalog.TransactionState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.states[txID]; !ok {
		return fmt.Errorf("transaction %s not found", txID)
	}
	m.states[txID] = state
	return nil
}

func (m *Transactions) CommitTransaction(_ context.Context, txID string) error {
	return m.finish(txID, catalog.TransactionCommitted)
}

func (m *Transactions) RollbackTransaction(_ context.Context, txID string) error {
	return m.finish(txID, catalog.TransactionAborted)
}

func (m *Transactions) GetTransactionStatus(_ context.Context, txID string) (catalog.TransactionState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[txID]
	return s, ok
}
