"""Rows in: strict JSONL/CSV readers, ${row.x} substitution, row selection."""
