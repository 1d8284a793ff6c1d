"""The build tools themselves, asked instead of predicted: finding a compiler, running it confined
(CPU seconds, memory, wall time, no network) on a private directory, and reading its diagnostics
back as values. I/O lives here; what a compile means for a review is bot/facts/compiled.py's."""
