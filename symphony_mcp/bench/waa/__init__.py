"""WindowsAgentArena through its machines' servers: its task JSONs set up through WAA's routes, the agent's server on
the WAA backend, scored by OSWorld's metric functions (which WAA uses) over WAA's getters where they run here."""
