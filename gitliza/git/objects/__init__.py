"""Git objects of our own making: the trees of a transition written as one pack (trees.py,
packfile.py), the packs merged and cleaned up (packs.py, packmerge.py), gitliza's own
object store (ownstore.py) and a long-lived handle letting go of removed packs
(odbfresh.py)."""
