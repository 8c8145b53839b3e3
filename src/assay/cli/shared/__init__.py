"""What the command modules of ``assay.cli`` share: error handling and printing
(``common``), typer options (``options``), rendering results (``render``) and the dataset
commands' helpers (``dataset_support``). Nothing here defines a command."""
