"""ARR-COC-VIS benchmarks: document generator and evidence-recall benchmark (run from the repository root)."""
