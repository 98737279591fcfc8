"""The git-credentials' use cases, by concern: the vault's opening (:mod:`.vault`), company
secrets (:mod:`.secrets`), credential resolutions recorded (:mod:`.resolutions`), and resolving
a git credential (:mod:`.resolver`, with its memo :mod:`.memo`);
:class:`git_credentials.application.GitCredentialsApplication` composes the stored ones."""
