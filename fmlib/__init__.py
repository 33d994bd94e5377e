"""fmlib: factorization machines and their variants, small and tested (layers: the README's Architecture section)."""
