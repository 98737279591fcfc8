"""What the git-credentials reaches outside its process: the master keys and their key file
(:mod:`.masterkey`), envelope encryption (:mod:`.crypto`), the key vault (:mod:`.vault`) and
sealing through it (:mod:`.sealing`), and GitHub's pull requests over HTTP (:mod:`.github`, cached
by :mod:`.cache`)."""
