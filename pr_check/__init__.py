"""The composition root: wires the pure core (`bot`), the checks, the App and the smoke runner."""
