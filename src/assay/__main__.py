"""``python -m assay``."""

from assay.cli.app import main

main()
