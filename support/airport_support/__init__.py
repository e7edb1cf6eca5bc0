"""The library the generated contract package (airport_contracts) is written against.

The generated package is the contract as data — its error table, payload field tables,
operation rows, the dispatch table, vocabularies — plus Protocols and types. The code that
walks that data is here, written once and imported, as python-betterproto's generated code
imports betterproto: the error base class, the table-driven payload codec, the row shapes,
the rowid conventions, Go's context.Context. Nothing here names an item of the contract.
"""
