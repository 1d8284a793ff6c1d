"""`python -m smoke`: the same entry point as `pr-check smoke`."""

from smoke.cli import main

raise SystemExit(main())
