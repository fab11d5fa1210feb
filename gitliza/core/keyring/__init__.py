"""Who may sign a board commit (signers) and the OpenSSH signatures git checks (sshsig), pure."""
