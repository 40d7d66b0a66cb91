"""Candidate programs: running one per case in a sandbox holding its task alone, grades on its artefacts, human
review of presentation and calibration of graders."""
