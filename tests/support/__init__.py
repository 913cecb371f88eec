"""What the tests share: source-tree and library factories, git access, upstream
repositories, publishers, journey documents, and the killer the crash tests run.

Imported as ``support.<module>``: pyproject's pytest ``pythonpath`` puts tests/ on sys.path.
"""
