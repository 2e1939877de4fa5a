"""fleetlab: real Kubernetes hub and member clusters, and real fleet controllers, as host processes.

Run as ``PYTHONPATH=lab python -m fleetlab <command>`` (see ``fleetlab.cli``).
"""
