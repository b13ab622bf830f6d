"""The pipeline's nodes: small async functions over one TurnState, each returning a Step."""
