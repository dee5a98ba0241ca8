"""Benchmarks: `python -m mha_lesson.bench [name] [options]`; each name is a module here with main(argv)."""
