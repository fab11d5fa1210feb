"""The git remote a board is shared with: remote.py which remote (resolved once: `Remote`) and where
its refs are mirrored here; transport.py fetch and push with a lease (direct.py in process for a
plain bare remote on this machine; pushresults.py what a push did); lsremote.py the remote's board
refs in one ls-remote; shallow.py the state ref fetched shallow. No package face: an importer
names the module it uses."""
