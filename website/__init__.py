"""The series as a static web site whose explorers still respond: `make site` or `python -m website`.

Outside the package a learner installs, beside benchmarks/. `record` runs inside each lesson's kernel and records
every explorer's states with the real explorer code; `build` executes the lessons, turns each recorded explorer
into controls that replay its frames in the browser (static/explorer.js), and hands the pages to Sphinx with
myst-nb and the book theme (conf.py). See README.md's "Read it online".
"""
