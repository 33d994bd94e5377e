"""fmlib: factorization machines and their variants, small and tested (see DESIGN.md)."""
