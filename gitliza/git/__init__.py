# pygit2's reference lookup keeps every name it is given: wrapped once, before any repository of
# gitliza's is opened (reflookup.py).
from gitliza.git import reflookup

reflookup.install()
