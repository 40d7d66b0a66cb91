"""Candidate programs: running one per case in a fresh directory, grades on its artefacts, human review of
presentation and calibration of graders."""
