from ddlsched.cli import main

main()
