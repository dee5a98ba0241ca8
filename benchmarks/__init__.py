"""Benchmarks of mha_lesson, outside the package a learner installs: `python -m benchmarks [NAME] [options]`.

Each NAME is a module here with main(argv); see README.md beside this file. `_lab` is the browser driver that
`python -m benchmarks browser` and the browser tests share.
"""
