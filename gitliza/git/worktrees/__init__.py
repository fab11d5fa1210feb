"""Task worktrees (`<main>/.worktrees/<id>` on branch `liza/<id>`): tasktrees.py where they are,
creating, reusing and removing them; listing.py what is on disk; admin.py git's administration
data and the worktree mutex; clean.py a clean detached checkout of one commit; detached.py a
detached worktree added without git's placeholder HEAD. No package face: an importer names the
module it uses, so git's admin data is read without loading the rest."""
