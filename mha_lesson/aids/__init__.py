"""Learning aids around the lessons: the concept map, the flashcard deck and the static HTML export.

Command lines: `python -m mha_lesson.aids.flashcards` and `python -m mha_lesson.aids.export_html`.
"""
