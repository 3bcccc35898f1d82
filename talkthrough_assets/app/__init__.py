"""Operations shared by the CLI and the UI: the service, doctor, people, the UI supervisor."""
