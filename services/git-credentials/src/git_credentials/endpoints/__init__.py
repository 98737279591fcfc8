"""The git-credentials' bus endpoints, one class per group: secrets (:mod:`.secrets`), credentials
(:mod:`.credentials`); what they share is :mod:`.common`."""
