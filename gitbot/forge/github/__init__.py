"""The GitHub adapter: the Action's entry point (action.py), its inputs and outputs (inputs.py,
actions_io.py), the event (event.py), who may trigger (permissions.py), and the REST and GraphQL
calls behind interface.Forge (api.py, graphql.py)."""
