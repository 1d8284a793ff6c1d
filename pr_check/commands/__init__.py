"""The CLI's command families, one module each; pr_check/cli.py's command table names them."""
