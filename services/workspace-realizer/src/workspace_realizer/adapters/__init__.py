"""Host adapters of the workspace-realizer: git and shell commands, behind the ports of
``ports.py``. The application and handlers only ever see the ports."""
