// Package ddl gives airport-go-server a catalog that creates, drops, renames and alters, over
// the static demo catalog: airport-go's DynamicCatalog, DynamicSchema and DynamicTable kept in
// memory, with the sentinel errors airport-go maps to its status codes. The interop tests run
// the same DDL calls against it and against pyairport and compare what clients see.
package ddl

import (
	"context"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hugr-lab/airport-go/catalog"
)

// Catalog serves base's schemas as they are and the schemas it creates.
type Catalog struct {
	base    catalog.Catalog
	mu      sync.Mutex
	schemas map[string]*Schema
}

var (
	_ catalog.DynamicCatalog = (*Catalog)(nil)
	_ catalog.DynamicSchema  = (*Schema)(nil)
	_ catalog.DynamicTable   = (*Table)(nil)
)

func Wrap(base catalog.Catalog) *Catalog {
	return &Catalog{base: base, schemas: map[string]*Schema{}}
}

func (c *Catalog) Schemas(ctx context.Context) ([]catalog.Schema, error) {
	out, err := c.base.Schemas(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.schemas))
	for name := range c.schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, c.schemas[name])
	}
	return out, nil
}

func (c *Catalog) Schema(ctx context.Context, name string) (catalog.Schema, error) {
	c.mu.Lock()
	s, ok := c.schemas[name]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	return c.base.Schema(ctx, name)
}

func (c *Catalog) CreateSchema(ctx context.Context, name string, opts catalog.CreateSchemaOptions) (catalog.Schema, error) {
	if existing, _ := c.Schema(ctx, name); existing != nil {
		return nil, catalog.ErrAlreadyExists
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &Schema{name: name, comment: opts.Comment, tables: map[string]*Table{}}
	c.schemas[name] = s
	return s, nil
}

func (c *Catalog) DropSchema(ctx context.Context, name string, opts catalog.DropSchemaOptions) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.schemas[name]
	if !ok {
		if opts.IgnoreNotFound {
			return nil
		}
		return catalog.ErrNotFound
	}
	if len(s.tables) > 0 {
		return catalog.ErrSchemaNotEmpty
	}
	delete(c.schemas, name)
	return nil
}

// Schema keeps its tables in memory.
type Schema struct {
	name, comment string
	mu            sync.Mutex
	tables        map[string]*Table
}

func (s *Schema) Name() string    { return s.name }
func (s *Schema) Comment() string { return s.comment }

func (s *Schema) Tables(context.Context) ([]catalog.Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.tables))
	for name := range s.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]catalog.Table, 0, len(names))
	for _, name := range names {
		out = append(out, s.tables[name])
	}
	return out, nil
}

func (s *Schema) Table(_ context.Context, name string) (catalog.Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tables[name]; ok {
		return t, nil
	}
	return nil, nil
}

func (s *Schema) ScalarFunctions(context.Context) ([]catalog.ScalarFunction, error) {
	return nil, nil
}
func (s *Schema) TableFunctions(context.Context) ([]catalog.TableFunction, error) { return nil, nil }
func (s *Schema) TableFunctionsInOut(context.Context) ([]catalog.TableFunctionInOut, error) {
	return nil, nil
}

// rowidField is the rowid column every table gets first, as pyairport's memory tables do.
var rowidField = arrow.Field{
	Name: "rowid", Type: arrow.PrimitiveTypes.Int64, Nullable: true,
	Metadata: arrow.NewMetadata([]string{"is_rowid"}, []string{"true"}),
}

func (s *Schema) CreateTable(_ context.Context, name string, schema *arrow.Schema, opts catalog.CreateTableOptions) (catalog.Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if existing, ok := s.tables[name]; ok {
		switch opts.OnConflict {
		case catalog.OnConflictIgnore:
			return existing, nil
		case catalog.OnConflictReplace:
		default:
			return nil, catalog.ErrAlreadyExists
		}
	}
	notNull := map[int]bool{}
	for _, i := range opts.NotNullConstraints {
		notNull[int(i)] = true
	}
	fields := []arrow.Field{rowidField}
	for i, f := range schema.Fields() {
		if f.Name == rowidField.Name {
			continue
		}
		f.Nullable = f.Nullable && !notNull[i]
		fields = append(fields, f)
	}
	t := &Table{name: name, schema: arrow.NewSchema(fields, nil)}
	s.tables[name] = t
	return t, nil
}

func (s *Schema) DropTable(_ context.Context, name string, opts catalog.DropTableOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tables[name]; !ok {
		if opts.IgnoreNotFound {
			return nil
		}
		return catalog.ErrNotFound
	}
	delete(s.tables, name)
	return nil
}

func (s *Schema) RenameTable(_ context.Context, oldName, newName string, opts catalog.RenameTableOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tables[oldName]
	if !ok {
		if opts.IgnoreNotFound {
			return nil
		}
		return catalog.ErrNotFound
	}
	if _, taken := s.tables[newName]; taken {
		return catalog.ErrAlreadyExists
	}
	delete(s.tables, oldName)
	t.mu.Lock()
	t.name = newName
	t.mu.Unlock()
	s.tables[newName] = t
	return nil
}

// Table is a schema without rows: what DDL changes.
type Table struct {
	mu     sync.Mutex
	name   string
	schema *arrow.Schema
}

func (t *Table) Name() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.name
}
func (t *Table) Comment() string { return "" }

func (t *Table) ArrowSchema(columns []string) *arrow.Schema {
	t.mu.Lock()
	defer t.mu.Unlock()
	return catalog.ProjectSchema(t.schema, columns)
}

func (t *Table) Scan(context.Context, *catalog.ScanOptions) (array.RecordReader, error) {
	schema := t.ArrowSchema(nil)
	builder := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer builder.Release()
	batch := builder.NewRecordBatch()
	defer batch.Release()
	return array.NewRecordReader(schema, []arrow.RecordBatch{batch})
}

// alter replaces the table's fields with change's, under the lock.
func (t *Table) alter(change func(fields []arrow.Field) ([]arrow.Field, error)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	fields, err := change(append([]arrow.Field(nil), t.schema.Fields()...))
	if err != nil {
		return err
	}
	t.schema = arrow.NewSchema(fields, nil)
	return nil
}

// column is a user column's index (the rowid is not one), or -1.
func column(fields []arrow.Field, name string) int {
	for i, f := range fields {
		if i > 0 && f.Name == name {
			return i
		}
	}
	return -1
}

func missing(ignore bool) error {
	if ignore {
		return nil
	}
	return catalog.ErrNotFound
}

func (t *Table) AddColumn(_ context.Context, columnSchema *arrow.Schema, opts catalog.AddColumnOptions) error {
	field := columnSchema.Field(0)
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		if column(fields, field.Name) >= 0 {
			if opts.IfColumnNotExists {
				return fields, nil
			}
			return nil, catalog.ErrAlreadyExists
		}
		return append(fields, field), nil
	})
}

func (t *Table) RemoveColumn(_ context.Context, name string, opts catalog.RemoveColumnOptions) error {
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		i := column(fields, name)
		if i < 0 {
			return fields, missing(opts.IfColumnExists || opts.IgnoreNotFound)
		}
		return append(fields[:i], fields[i+1:]...), nil
	})
}

func (t *Table) RenameColumn(_ context.Context, oldName, newName string, opts catalog.RenameColumnOptions) error {
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		i := column(fields, oldName)
		if i < 0 {
			return fields, missing(opts.IgnoreNotFound)
		}
		if column(fields, newName) >= 0 {
			return nil, catalog.ErrAlreadyExists
		}
		fields[i].Name = newName
		return fields, nil
	})
}

func (t *Table) ChangeColumnType(_ context.Context, columnSchema *arrow.Schema, _ string, opts catalog.ChangeColumnTypeOptions) error {
	field := columnSchema.Field(0)
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		i := column(fields, field.Name)
		if i < 0 {
			return fields, missing(opts.IgnoreNotFound)
		}
		fields[i].Type = field.Type
		return fields, nil
	})
}

func (t *Table) nullable(name string, nullable, ignore bool) error {
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		i := column(fields, name)
		if i < 0 {
			return fields, missing(ignore)
		}
		fields[i].Nullable = nullable
		return fields, nil
	})
}

func (t *Table) SetNotNull(_ context.Context, name string, opts catalog.SetNotNullOptions) error {
	return t.nullable(name, false, opts.IgnoreNotFound)
}

func (t *Table) DropNotNull(_ context.Context, name string, opts catalog.DropNotNullOptions) error {
	return t.nullable(name, true, opts.IgnoreNotFound)
}

func (t *Table) SetDefault(_ context.Context, name, expression string, opts catalog.SetDefaultOptions) error {
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		i := column(fields, name)
		if i < 0 {
			return fields, missing(opts.IgnoreNotFound)
		}
		fields[i].Metadata = arrow.NewMetadata([]string{"default"}, []string{expression})
		return fields, nil
	})
}

// structAt walks path (a column, then field names) to the struct that holds its last name.
func structAt(fields []arrow.Field, path []string) (*arrow.Field, *arrow.StructType, int, bool) {
	if len(path) < 2 {
		return nil, nil, -1, false
	}
	i := column(fields, path[0])
	if i < 0 {
		return nil, nil, -1, false
	}
	holder := &fields[i]
	for _, name := range path[1 : len(path)-1] {
		st, ok := holder.Type.(*arrow.StructType)
		if !ok {
			return nil, nil, -1, false
		}
		j, found := st.FieldIdx(name)
		if !found {
			return nil, nil, -1, false
		}
		f := st.Field(j)
		holder = &f
	}
	st, ok := holder.Type.(*arrow.StructType)
	if !ok {
		return nil, nil, -1, false
	}
	j, found := st.FieldIdx(path[len(path)-1])
	return holder, st, j, found
}

func (t *Table) AddField(_ context.Context, columnSchema *arrow.Schema, opts catalog.AddFieldOptions) error {
	wanted := columnSchema.Field(0)
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		i := column(fields, wanted.Name)
		have, okHave := fieldsOf(fields, i)
		want, okWant := wanted.Type.(*arrow.StructType)
		if !okHave || !okWant {
			return fields, missing(opts.IgnoreNotFound)
		}
		added := append([]arrow.Field(nil), have.Fields()...)
		for _, f := range want.Fields() {
			if _, exists := have.FieldIdx(f.Name); !exists {
				added = append(added, f)
			}
		}
		if len(added) == have.NumFields() {
			if opts.IfFieldNotExists {
				return fields, nil
			}
			return nil, catalog.ErrAlreadyExists
		}
		fields[i].Type = arrow.StructOf(added...)
		return fields, nil
	})
}

func fieldsOf(fields []arrow.Field, i int) (*arrow.StructType, bool) {
	if i < 0 {
		return nil, false
	}
	st, ok := fields[i].Type.(*arrow.StructType)
	return st, ok
}

// Only fields of a top-level struct column are renamed or removed here (the paths the tests send).
func (t *Table) RenameField(_ context.Context, path []string, newName string, opts catalog.RenameFieldOptions) error {
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		_, st, j, found := structAt(fields, path)
		if !found || len(path) != 2 {
			return fields, missing(opts.IgnoreNotFound)
		}
		children := append([]arrow.Field(nil), st.Fields()...)
		children[j].Name = newName
		fields[column(fields, path[0])].Type = arrow.StructOf(children...)
		return fields, nil
	})
}

func (t *Table) RemoveField(_ context.Context, path []string, opts catalog.RemoveFieldOptions) error {
	return t.alter(func(fields []arrow.Field) ([]arrow.Field, error) {
		_, st, j, found := structAt(fields, path)
		if !found || len(path) != 2 {
			return fields, missing(opts.IgnoreNotFound)
		}
		children := append([]arrow.Field(nil), st.Fields()...)
		children = append(children[:j], children[j+1:]...)
		fields[column(fields, path[0])].Type = arrow.StructOf(children...)
		return fields, nil
	})
}
