"""What the front ends show: the views as data (data.py: status, one task, the audit trail, the
tasks an agent can take), and the materialized view .liza/*.yaml (materialize.py, rendered by
yamlrender.py; viewstamp.py what it reflects; usagefile.py `.liza/usage.yaml`). No package face:
an importer names the module it uses, so a read loads none of the view writer."""
