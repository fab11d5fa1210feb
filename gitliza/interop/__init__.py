"""Interoperation with the seed's files: read a `.liza/state.yaml` (and `log.yaml`) strictly,
import it as the genesis of a board, export any revision back to them."""
