from sgrgym.cli import main

raise SystemExit(main())
