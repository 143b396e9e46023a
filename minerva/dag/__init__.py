"""The physical DAG: op nodes, data nodes and the edges between them."""
