"""Learning aids around the lessons: the lesson list and minutes, the glossary, the concept map and the flashcards.

Command line: `python -m mha_lesson.aids.flashcards`. The static site is built outside the package (website/).
"""
