"""Side-by-side benchmarks of tensorsight against the tools it replaces (see README.md)."""
