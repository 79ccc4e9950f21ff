from blockopt.cli import main

raise SystemExit(main())
