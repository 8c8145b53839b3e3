"""What the command modules of ``assay.cli`` share: error handling and printing
(``common``), typer options (``options``), rendering results (``render``), the dataset
commands' helpers (``dataset_support``) and the process's scratch folder (``scratch``).
Nothing here defines a command."""
