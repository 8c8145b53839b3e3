"""``python -m assay``."""

from assay.cli.entry import main

main()
