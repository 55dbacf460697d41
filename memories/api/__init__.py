"""memories' REST endpoints (/api/v1/), a module per resource; memories/urls.py routes them.

Each view: validate, call one service (or selector), serialize. Every lookup goes through
the caller's Scope, so ids outside it 404.
"""
