from d2k.cli import main

main()
