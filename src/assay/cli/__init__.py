"""The ``assay`` command line."""
