"""The demo catalog `pyairport serve` serves without --warehouse: the users tables of every
capability, read-only tables and a few functions, on memory or on Spark."""

from .catalogs import (
    LEGACY,
    USERS_COLUMNS,
    generated_users,
    memory_demo_catalog,
    spark_demo_catalog,
)

__all__ = [
    "LEGACY",
    "USERS_COLUMNS",
    "generated_users",
    "memory_demo_catalog",
    "spark_demo_catalog",
]
