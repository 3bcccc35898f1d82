import sys

from talkthrough_mcp.server import main

sys.exit(main())
